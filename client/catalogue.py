"""The respondent pages' own words (buttons, privacy notes, errors), in every language we ship.

One source of truth: the server renders its templates from here and hands the page script the
same table (``page_data.messages``), so a word is translated once. Add a language by adding a
table with every key of English; a test checks that each table is complete.
"""

from __future__ import annotations

import math

from .privacy import posterior_bound

DEFAULT = "en"

MESSAGES = {
    "en": {
        "language": "Language",
        "intro": "Your answers are randomized on this device before anything is sent: the server only ever "
                 "receives the randomized reports, shown to you before you leave. Each question says how much "
                 "a report can reveal.",
        "required": "required",
        "yes": "Yes",
        "no": "No",
        "number_range": "Number from {min} to {max} (steps of {step})",
        "send": "Randomize my answers and send",
        "back": "Back",
        "next": "Next",
        "progress": "Section {index} of {total}",
        "answer_this": "Please answer this question.",
        "out_of_range": "Enter a number from {min} to {max}.",
        "check_answers": "Please check the answers marked below.",
        "sent": "Sent",
        "sent_explained": "Your true answers never left this device. This is exactly what was sent; where a "
                          "report differs from what you answered, that is the randomization protecting you.",
        "none_selected": "(none selected)",
        "request_as_sent": "The request as sent",
        "finish": "Finish",
        "sending": "Sending…",
        "already_used": "This invitation has already been used to answer.",
        "closed": "This survey is closed.",
        "not_sent": "Your answers could not be sent: {reason}",
        "private_statement": "Your answer is randomized on your device before it is sent. Whatever anyone "
                             "believed about you beforehand, your report can change the odds by a factor of at "
                             "most {factor} (ε = {epsilon}): someone {prior} sure would become at most "
                             "{posterior} sure.",
        "public_statement": "This answer is sent exactly as you give it: it is not randomized, and anyone who "
                            "sees the data sees your answer.",
        "one_sided_statement": "Your answer is randomized on your device before it is sent, but only one way: one "
                               "of the reports is only ever sent for one particular true answer, and then reveals it.",
        "respondent_combined": "You give one combined answer to this question and a second one",
        "respondent_instruction": "You follow the instruction yourself",
        "respondent_companion_fact": "your answer to the second question",
        "respondent_draw_fact": "the outcome of the instruction's draw (such as a birthday)",
        "respondent_statement": "{how}, so this device never sees your true answer and sends only what you choose. "
                                "Whatever anyone believed about you beforehand, what you send can change the odds by "
                                "a factor of at most {factor} (ε = {epsilon}): someone {prior} sure would become at "
                                "most {posterior} sure. This holds as long as the researcher cannot know {fact}, and "
                                "it has nothing to do with your answer to this question.",
        "respondent_one_sided_statement": "{how}, so this device never sees your true answer and sends only what you "
                                          "choose. One choice is only ever made by someone whose true answer is no, so "
                                          "choosing it reveals that answer; the other hides your answer among everyone "
                                          "who made it. This holds as long as the researcher cannot know {fact}, and it "
                                          "has nothing to do with your answer to this question.",
        "crosswise_prompt": "Do not tell us your answer to the question above. Think of it and of your answer to a "
                            "second question: “{companion}” Are your two answers the same (both yes or both no), or "
                            "different? Choose only that.",
        "triangular_prompt": "Do not tell us your answer to the question above. Think of it and of your answer to a "
                             "second question: “{companion}” Choose A if both answers are no; otherwise choose B.",
        "randomizer_prompt": "Before you answer, follow this instruction, without anyone seeing: {instruction} "
                             "Then choose the answer it gives you.",
        "group_report": "{report} (group {group})",
        "split_ballot_statement": "{share} of respondents, chosen at random by the device before the question is "
                                  "shown, are asked it directly instead: they are told so, and their answer is sent "
                                  "exactly as they give it.",
        "direct_notice": "You were chosen at random to answer this question directly: your answer is sent exactly as "
                         "you give it, with no randomization. Comparing direct answers with randomized ones checks "
                         "that the private method works.",
        "direct_report": "{report} (asked directly)",
        "repeated_statement": "This survey is asked again in later waves. Your device keeps one random secret (never "
                              "an answer) so that the same answer is randomized the same way underneath in every wave, "
                              "and then randomized afresh on top for each report: all your reports together, in every "
                              "wave, change the odds by a factor of at most {factor_all} (ε = {epsilon_all}) as long as "
                              "your answer stays the same; if it changes, the new answer gets a randomized report of its "
                              "own, and the factor can be up to {factor_all} again.",
        "repeated_one_sided_statement": "This survey is asked again in later waves. Your device keeps one random secret "
                                        "(never an answer) so that the same answer is randomized the same way underneath in "
                                        "every wave, then randomized afresh on top for each report; the reports of all "
                                        "waves together protect what the statement above says for one design report, no "
                                        "less and no more. If your answer changes, the new answer gets a report of its own.",
        "unavailable": "The survey cannot be reached for a moment. Nothing was lost: please try again shortly.",
        "rate_limited_heading": "Too many requests from your connection",
        "rate_limited_message": "This connection opened or sent the survey more often in the last minute than the server "
                                "allows one address. Nothing you entered was sent. Wait a minute, then reload the page. "
                                "If many people share this connection (an office, a campus), tell the survey's "
                                "organisers: they can raise the limit.",
        "no_wave_heading": "Not open right now",
        "no_wave_message": "This survey is asked in waves, and no wave is open at the moment. Please come back when "
                           "you are invited to the next one.",
        "memo_unavailable": "This survey is asked again in later waves: your browser must keep one random secret for it "
                            "(never an answer), so that your answers stay protected from wave to wave, but this browser "
                            "does not let the page store anything. Allow this site to keep data, or answer in another "
                            "browser or device you keep using.",
        "wave_closed": "The wave this page was opened in has closed, so these answers were not sent. Reload the page to "
                       "answer in the current wave.",
        "same": "The same (both yes or both no)",
        "different": "Different (one yes, one no)",
        "no_to_both": "A: no to both",
        "other": "B: any other combination",
        "public_warning": "Some answers are sent as given, with no privacy guarantee: {questions}.",
        "open_warning": "This survey accepts answers without an invitation link. If you answer it more than "
                        "once, each extra answer tells a little more about you: please answer once.",
        "coin_intro": "JavaScript is off, so this page cannot randomize for you. Use a coin instead: for each "
                      "question below, follow the steps and tick only the result. Nobody can tell whether a tick "
                      "is your true answer or the coin's.",
        "coin_1": "Flip a coin, without anyone seeing it.",
        "coin_2": "If it lands heads: tick your true answer.",
        "coin_3": "If it lands tails: flip it again, and tick Yes if heads, No if tails.",
        "only_if": "Answer only if {condition}.",
        "condition_is": "your answer to “{question}” is {value}",
        "condition_is_not": "your answer to “{question}” is not {value}",
        "condition_compare": "your answer to “{question}” is {op} {value}",
        "condition_selected": "you ticked {value} for “{question}”",
        "and": " and ",
        "or": " or ",
        "not": "it is not so that {condition}",
        "op_<": "less than", "op_<=": "at most", "op_>": "more than", "op_>=": "at least",
        "skipped_need_js": "These questions need JavaScript and are skipped: {questions}.",
        "send_plain": "Send",
        "not_found_heading": "Survey not found",
        "not_found": "There is no survey at this address. Check the link you were given.",
        "closed_heading": "This survey is closed",
        "closed_message": "Thank you for your interest; it no longer accepts answers.",
        "check_heading": "Please check your answers",
        "enter_number": "“{question}”: enter a number.",
        "tick_one": "“{question}”: please tick one answer.",
        "cannot_accept": "The form contained answers this page cannot accept.",
        "form_expired": "This form has expired or was not sent from this survey's page. Open the survey again and answer there.",
        "stale_form": "This page was made for another version of the survey. Please open the survey again.",
        "used_heading": "Already answered",
        "used_message": "This invitation has already been used to answer the survey.",
        "thanks_heading": "Thank you",
        "thanks_message": "Your randomized answers to “{title}” were received. Your true answers never left "
                          "your device.",
        "thanks_coin": "Your answers to “{title}” were received. What you ticked is what was sent: it "
                       "protects you where you followed the coin, and was sent as given where you did not.",
        "invalid_invitation_heading": "This invitation link does not work",
        "invalid_invitation": "This link is not an invitation to this survey. Open the link from your invitation "
                              "again, exactly as you received it.",
        "needs_invitation_heading": "This survey is by invitation",
        "needs_invitation": "Please open the survey with the personal link from your invitation.",
        "changed": "This survey has changed since this page was opened. Reload the page to answer the current "
                   "version; your answers here are not kept when you reload.",
        "reload": "Reload the survey",
        "answers_kept": "Your answers are still on this page (only in this page, nowhere else): try sending again.",
        "offline": "There is no connection to the survey server",
        "server_trouble": "The survey server is having trouble right now.",
        "saved_heading": "Saved on this device",
        "saved_explained": "Your true answers never left this device. This is exactly what will be sent once there "
                           "is a connection; where a report differs from what you answered, that is the "
                           "randomization protecting you.",
        "saved_offline": "There is no connection right now. Your answers, already randomized, are saved on this "
                         "device and will be sent when you are back online. You can close this page: they will also "
                         "be sent the next time you open this survey.",
        "outbox_waiting": "Your answers from an earlier visit are saved on this device and will be sent when you "
                          "are back online.",
        "outbox_sent": "Your saved answers have now been sent. Thank you.",
        "outside_range": "outside {min}–{max}: that is the randomization protecting you",
        "back_to_survey": "Back to the survey",
    },
    "es": {
        "language": "Idioma",
        "intro": "Sus respuestas se aleatorizan en este dispositivo antes de enviar nada: el servidor solo "
                 "recibe los informes aleatorizados, que se le muestran antes de salir. Cada pregunta indica "
                 "cuánto puede revelar un informe.",
        "required": "obligatoria",
        "yes": "Sí",
        "no": "No",
        "number_range": "Número de {min} a {max} (en pasos de {step})",
        "send": "Aleatorizar mis respuestas y enviar",
        "back": "Atrás",
        "next": "Siguiente",
        "progress": "Sección {index} de {total}",
        "answer_this": "Por favor, responda esta pregunta.",
        "out_of_range": "Escriba un número de {min} a {max}.",
        "check_answers": "Por favor, revise las respuestas marcadas abajo.",
        "sent": "Enviado",
        "sent_explained": "Sus respuestas verdaderas nunca salieron de este dispositivo. Esto es exactamente lo "
                          "que se envió; donde un informe difiere de lo que respondió, es la aleatorización que "
                          "le protege.",
        "none_selected": "(nada seleccionado)",
        "request_as_sent": "La solicitud tal como se envió",
        "finish": "Terminar",
        "sending": "Enviando…",
        "already_used": "Esta invitación ya se usó para responder.",
        "closed": "Esta encuesta está cerrada.",
        "not_sent": "No se pudieron enviar sus respuestas: {reason}",
        "private_statement": "Su respuesta se aleatoriza en su dispositivo antes de enviarse. Crea lo que crea "
                             "alguien sobre usted de antemano, su informe puede cambiar las probabilidades como "
                             "mucho en un factor de {factor} (ε = {epsilon}): alguien seguro al {prior} pasaría a "
                             "estar seguro como mucho al {posterior}.",
        "public_statement": "Esta respuesta se envía tal como la da: no se aleatoriza, y cualquiera que vea los "
                            "datos ve su respuesta.",
        "one_sided_statement": "Su respuesta se aleatoriza en su dispositivo antes de enviarse, pero solo en un "
                               "sentido: uno de los informes solo se envía para una respuesta verdadera concreta, y "
                               "entonces la revela.",
        "respondent_combined": "Usted da una sola respuesta combinada a esta pregunta y a una segunda",
        "respondent_instruction": "Usted sigue la instrucción por su cuenta",
        "respondent_companion_fact": "su respuesta a la segunda pregunta",
        "respondent_draw_fact": "el resultado del sorteo que pide la instrucción (como una fecha de cumpleaños)",
        "respondent_statement": "{how}, así que este dispositivo nunca ve su respuesta verdadera y solo envía lo que "
                                "usted elige. Crea lo que crea alguien sobre usted de antemano, lo que envía puede "
                                "cambiar las probabilidades como mucho en un factor de {factor} (ε = {epsilon}): "
                                "alguien seguro al {prior} pasaría a estar seguro como mucho al {posterior}. Esto vale "
                                "mientras quien investiga no pueda conocer {fact}, y no tenga nada que ver con su "
                                "respuesta a esta pregunta.",
        "respondent_one_sided_statement": "{how}, así que este dispositivo nunca ve su respuesta verdadera y solo "
                                          "envía lo que usted elige. Una de las opciones solo la elige quien responde "
                                          "no de verdad, así que elegirla revela esa respuesta; la otra oculta su "
                                          "respuesta entre todas las personas que la eligen. Esto vale mientras quien "
                                          "investiga no pueda conocer {fact}, y no tenga nada que ver con su respuesta "
                                          "a esta pregunta.",
        "crosswise_prompt": "No nos diga su respuesta a la pregunta de arriba. Piense en ella y en su respuesta a una "
                            "segunda pregunta: «{companion}» ¿Son sus dos respuestas iguales (las dos sí o las dos "
                            "no) o distintas? Elija solo eso.",
        "triangular_prompt": "No nos diga su respuesta a la pregunta de arriba. Piense en ella y en su respuesta a una "
                             "segunda pregunta: «{companion}» Elija A si las dos respuestas son no; si no, elija B.",
        "randomizer_prompt": "Antes de responder, siga esta instrucción sin que nadie le vea: {instruction} Luego "
                             "elija la respuesta que le indique.",
        "group_report": "{report} (grupo {group})",
        "split_ballot_statement": "El {share} de las personas, elegidas al azar por el dispositivo antes de mostrar "
                                  "la pregunta, la responden directamente: se les avisa, y su respuesta se envía tal "
                                  "como la dan.",
        "direct_notice": "Se le eligió al azar para responder esta pregunta directamente: su respuesta se envía tal "
                         "como la da, sin aleatorizar. Comparar las respuestas directas con las aleatorizadas "
                         "comprueba que el método privado funciona.",
        "direct_report": "{report} (pregunta directa)",
        "repeated_statement": "Esta encuesta se repite en oleadas posteriores. Su dispositivo guarda un secreto aleatorio "
                              "(nunca una respuesta) para que la misma respuesta se aleatorice de la misma manera en el "
                              "fondo en cada oleada, y luego otra vez, de nuevo, en cada informe: todos sus informes "
                              "juntos, en todas las oleadas, cambian las probabilidades como mucho en un factor de "
                              "{factor_all} (ε = {epsilon_all}) mientras su respuesta no cambie; si cambia, la nueva "
                              "respuesta recibe un informe aleatorizado propio, y el factor puede volver a ser {factor_all}.",
        "repeated_one_sided_statement": "Esta encuesta se repite en oleadas posteriores. Su dispositivo guarda un secreto "
                                        "aleatorio (nunca una respuesta) para que la misma respuesta se aleatorice de la "
                                        "misma manera en el fondo en cada oleada, y luego otra vez en cada informe; los "
                                        "informes de todas las oleadas juntos protegen lo que dice la frase anterior para un "
                                        "informe del diseño, ni más ni menos. Si su respuesta cambia, la nueva recibe un "
                                        "informe propio.",
        "unavailable": "No se puede acceder a la encuesta por un momento. No se perdió nada: vuelva a intentarlo en breve.",
        "rate_limited_heading": "Demasiadas solicitudes desde su conexión",
        "rate_limited_message": "Esta conexión abrió o envió la encuesta más veces en el último minuto de lo que el "
                                "servidor permite a una dirección. No se envió nada de lo que escribió. Espere un minuto "
                                "y recargue la página. Si muchas personas comparten esta conexión (una oficina, un "
                                "campus), avise a quienes organizan la encuesta: pueden subir el límite.",
        "no_wave_heading": "No está abierta ahora",
        "no_wave_message": "Esta encuesta se hace por oleadas y ahora no hay ninguna abierta. Vuelva cuando le inviten a "
                           "la próxima.",
        "memo_unavailable": "Esta encuesta se repite en oleadas posteriores: su navegador debe guardar un secreto aleatorio "
                            "(nunca una respuesta) para que sus respuestas sigan protegidas de una oleada a otra, pero este "
                            "navegador no deja guardar nada a la página. Permita que este sitio guarde datos, o responda "
                            "en otro navegador o dispositivo que siga usando.",
        "wave_closed": "La oleada en la que se abrió esta página ha terminado, así que estas respuestas no se enviaron. "
                       "Recargue la página para responder en la oleada actual.",
        "same": "Iguales (las dos sí o las dos no)",
        "different": "Distintas (una sí y otra no)",
        "no_to_both": "A: no a las dos",
        "other": "B: cualquier otra combinación",
        "public_warning": "Algunas respuestas se envían tal cual, sin garantía de privacidad: {questions}.",
        "open_warning": "Esta encuesta acepta respuestas sin enlace de invitación. Si la responde más de una vez, "
                        "cada respuesta adicional dice un poco más sobre usted: responda una sola vez.",
        "coin_intro": "JavaScript está desactivado, así que esta página no puede aleatorizar por usted. Use una "
                      "moneda: en cada pregunta, siga los pasos y marque solo el resultado. Nadie puede saber si "
                      "una marca es su respuesta verdadera o la de la moneda.",
        "coin_1": "Lance una moneda sin que nadie la vea.",
        "coin_2": "Si sale cara: marque su respuesta verdadera.",
        "coin_3": "Si sale cruz: lance otra vez, y marque Sí si sale cara, No si sale cruz.",
        "only_if": "Responda solo si {condition}.",
        "condition_is": "su respuesta a «{question}» es {value}",
        "condition_is_not": "su respuesta a «{question}» no es {value}",
        "condition_compare": "su respuesta a «{question}» es {op} {value}",
        "condition_selected": "marcó {value} en «{question}»",
        "and": " y ",
        "or": " o ",
        "not": "no es cierto que {condition}",
        "op_<": "menor que", "op_<=": "como mucho", "op_>": "mayor que", "op_>=": "al menos",
        "skipped_need_js": "Estas preguntas necesitan JavaScript y se omiten: {questions}.",
        "send_plain": "Enviar",
        "not_found_heading": "Encuesta no encontrada",
        "not_found": "No hay ninguna encuesta en esta dirección. Revise el enlace que recibió.",
        "closed_heading": "Esta encuesta está cerrada",
        "closed_message": "Gracias por su interés; ya no acepta respuestas.",
        "check_heading": "Por favor, revise sus respuestas",
        "enter_number": "«{question}»: escriba un número.",
        "tick_one": "«{question}»: marque una respuesta.",
        "cannot_accept": "El formulario contenía respuestas que esta página no puede aceptar.",
        "form_expired": "Este formulario caducó o no se envió desde la página de la encuesta. Abra la encuesta de nuevo y responda allí.",
        "stale_form": "Esta página se hizo para otra versión de la encuesta. Por favor, ábrala de nuevo.",
        "used_heading": "Ya respondida",
        "used_message": "Esta invitación ya se usó para responder la encuesta.",
        "thanks_heading": "Gracias",
        "thanks_message": "Se recibieron sus respuestas aleatorizadas a «{title}». Sus respuestas verdaderas "
                          "nunca salieron de su dispositivo.",
        "thanks_coin": "Se recibieron sus respuestas a «{title}». Lo que marcó es lo que se envió: le protege "
                       "donde siguió la moneda, y se envió tal cual donde no la siguió.",
        "invalid_invitation_heading": "Este enlace de invitación no funciona",
        "invalid_invitation": "Este enlace no es una invitación a esta encuesta. Vuelva a abrir el enlace de su "
                              "invitación, tal como lo recibió.",
        "needs_invitation_heading": "Esta encuesta es por invitación",
        "needs_invitation": "Abra la encuesta con el enlace personal de su invitación.",
        "changed": "Esta encuesta cambió desde que se abrió esta página. Recargue la página para responder la "
                   "versión actual; sus respuestas aquí no se conservan al recargar.",
        "reload": "Recargar la encuesta",
        "answers_kept": "Sus respuestas siguen en esta página (solo en esta página, en ningún otro lugar): "
                        "intente enviarlas de nuevo.",
        "offline": "No hay conexión con el servidor de la encuesta",
        "server_trouble": "El servidor de la encuesta tiene problemas en este momento.",
        "saved_heading": "Guardadas en este dispositivo",
        "saved_explained": "Sus respuestas verdaderas nunca salieron de este dispositivo. Esto es exactamente lo que "
                           "se enviará cuando haya conexión; donde un informe difiere de lo que respondió, es la "
                           "aleatorización que le protege.",
        "saved_offline": "Ahora no hay conexión. Sus respuestas, ya aleatorizadas, quedan guardadas en este "
                         "dispositivo y se enviarán cuando vuelva a tener conexión. Puede cerrar esta página: también "
                         "se enviarán la próxima vez que abra esta encuesta.",
        "outbox_waiting": "Sus respuestas de una visita anterior están guardadas en este dispositivo y se enviarán "
                          "cuando vuelva a tener conexión.",
        "outbox_sent": "Sus respuestas guardadas ya se enviaron. Gracias.",
        "outside_range": "fuera de {min}–{max}: es la aleatorización que le protege",
        "back_to_survey": "Volver a la encuesta",
    },
}


def messages(language: str | None) -> dict:
    """The table of ``language`` (its base language, else English)."""
    base = (language or DEFAULT).split("-")[0]
    return MESSAGES.get(language) or MESSAGES.get(base) or MESSAGES[DEFAULT]


def _number(value: float, digits: int) -> str:
    return f"{value:.{digits}g}"


#: Per respondent-side design: the catalogue words for how the respondent randomizes and for the fact
#: the guarantee assumes the researcher cannot know.
RESPONDENT_WORDS = {"crosswise": ("respondent_combined", "respondent_companion_fact"),
                    "triangular": ("respondent_combined", "respondent_companion_fact"),
                    "forced_response": ("respondent_instruction", "respondent_draw_fact"),
                    "cheating_detection": ("respondent_instruction", "respondent_draw_fact"),
                    "stochastic_lie_detector": ("respondent_instruction", "respondent_draw_fact")}


def privacy_statement(epsilon: float, language: str | None, prior: float = 0.02, randomized: bool = False,
                      respondent: str | None = None) -> str:
    """`deniable.client.Question.privacy_statement` in the page's language. ``respondent``: the design, when
    the respondent randomizes (crosswise, triangular, a natural randomizer): the statement then says the
    device never sees the answer and names the assumption the guarantee rests on."""
    words = messages(language)
    if respondent is not None:
        how, fact = (words[key] for key in RESPONDENT_WORDS[respondent])
        if math.isinf(epsilon):
            return words["respondent_one_sided_statement"].format(how=how, fact=fact)
        return words["respondent_statement"].format(
            how=how, fact=fact, factor=_number(math.exp(epsilon), 3), epsilon=_number(epsilon, 3), prior=f"{prior:.0%}",
            posterior=f"{posterior_bound(prior, epsilon):.1%}")
    if math.isinf(epsilon):
        return words["one_sided_statement" if randomized else "public_statement"]
    return words["private_statement"].format(
        factor=_number(math.exp(epsilon), 3), epsilon=_number(epsilon, 3), prior=f"{prior:.0%}",
        posterior=f"{posterior_bound(prior, epsilon):.1%}")


def split_ballot_statement(direct, language: str | None) -> str:
    """What a split ballot means for the respondent, said beside the question's own privacy statement."""
    return messages(language)["split_ballot_statement"].format(share=f"{float(direct) * 100:.3g}%")


def repeated_statement(epsilon_all: float, language: str | None) -> str:
    """What a repeated survey's memo means for the respondent, beside the question's statement (which gives one
    report's ε)."""
    words = messages(language)
    if math.isinf(epsilon_all):
        return words["repeated_one_sided_statement"]
    return words["repeated_statement"].format(factor_all=_number(math.exp(epsilon_all), 3),
                                              epsilon_all=_number(epsilon_all, 3))


def describe_condition(tree: dict, survey, language: str | None) -> str:
    """A skip-logic tree in words a respondent reads (the no-JavaScript form uses it)."""
    words = messages(language)
    op = tree["op"]
    if op in ("and", "or"):
        return words[op].join(describe_condition(arg, survey, language) for arg in tree["args"])
    if op == "not":
        return words["not"].format(condition=describe_condition(tree["arg"], survey, language))
    question = survey.questions[tree["question"]]
    value = tree["value"]
    if "number" in value:
        shown = value["number"]
    elif question.type == "yes_no":
        shown = words[value["text"]]
    else:
        shown = question.option_label(value["text"], language)
    text = question.text_in(language)
    if op == "selected":
        return words["condition_selected"].format(question=text, value=shown)
    if op == "=":
        return words["condition_is"].format(question=text, value=shown)
    if op == "!=":
        return words["condition_is_not"].format(question=text, value=shown)
    return words["condition_compare"].format(question=text, op=words[f"op_{op}"], value=shown)
